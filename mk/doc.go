// Package mk holds the Makefile fragments' helpers (mk/bin/go,
// mk/go-bootstrap.sh) and their test; it has no Go code of its own.
package mk
