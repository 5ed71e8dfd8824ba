package sys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDirNames lists a directory as os.ReadDir does: the same names,
// sorted, without "." and "..", in three allocations.
func TestDirNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"port2", "1", "b", ".hidden", "a-much-longer-name-than-the-others"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range ents {
		want = append(want, e.Name())
	}
	got, err := DirNames(filepath.Dir(dir), filepath.Base(dir))
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("DirNames = %q, %v; want %q", got, err, want)
	}
	if got, err := DirNames("", dir); err != nil || !slices.Equal(got, want) {
		t.Errorf("DirNames(\"\", dir) = %q, %v; want %q", got, err, want)
	}
	// DirFileNames leaves the directory out, by the records' d_type.
	files := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return n == "sub" })
	if got, err := DirFileNames("", dir); err != nil || !slices.Equal(got, files) {
		t.Errorf("DirFileNames = %q, %v; want %q", got, err, files)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := DirNames(dir, "sub"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("DirNames allocates %.0f times, want at most 3", allocs)
	}
	if _, err := DirNames(dir, "none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DirNames(missing) = %v, want ENOENT", err)
	}
	var pe *fs.PathError
	if _, err := DirNames(dir, "b"); !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "b") {
		t.Errorf("DirNames(a file) = %v, want a PathError naming it", err)
	}
}

// dirent is one linux_dirent64 record for name, padded to 8 bytes.
func dirent(name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	copy(b[19:], name)
	return b
}

// FuzzForEachName: any bytes as getdents64 records give names without a
// NUL, never "." or "..", each inside the input, and no panic.
func FuzzForEachName(f *testing.F) {
	f.Add(slices.Concat(dirent("."), dirent(".."), dirent("mlx5_0")))
	f.Add(dirent("x")[:10])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		forEachName(b, false, func(n []byte) {
			if bytes.IndexByte(n, 0) >= 0 || string(n) == "." || string(n) == ".." {
				t.Fatalf("name %q", n)
			}
			if !bytes.Contains(b, n) {
				t.Fatalf("name %q not in the records", n)
			}
		})
	})
}
