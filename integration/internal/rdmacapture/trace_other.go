//go:build !(linux && (amd64 || arm64))

package main

import (
	"errors"
	"io"
)

func trace(args []string, stdout, stderr, w io.Writer) error {
	return errors.New("rdmacapture runs only on linux/amd64 and linux/arm64")
}
