package ibsimtest

import "flag"

var update bool

func init() { flag.BoolVar(&update, "update", false, "rewrite testdata/net.fattree1k") }
