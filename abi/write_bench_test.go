//go:build linux

package abi

import "testing"

func BenchmarkAppendExWriteCmd(b *testing.B) {
	core := make([]byte, 40)
	driver := make([]byte, 24)
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = AppendExWriteCmd(buf[:0], 50, 0x7f0000001000, core, driver, 8, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseWriteCmd(b *testing.B) {
	buf, err := AppendExWriteCmd(nil, 50, 0x7f0000001000, make([]byte, 40), make([]byte, 24), 8, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseWriteCmd(buf); err != nil {
			b.Fatal(err)
		}
	}
}
