package exporter

import (
	"fmt"
	"io"
	"log/slog"
)

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }

func newTestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
