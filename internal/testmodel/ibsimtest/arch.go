package ibsimtest

import "runtime"

func runtimeGOARCH() string { return runtime.GOARCH }
