package errs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestWrap: Wrap's error reads and unwraps as fmt.Errorf("%s: %w") does,
// and New folds it the same way.
func TestWrap(t *testing.T) {
	w := Wrap("nil or zero object", syscall.EINVAL)
	f := fmt.Errorf("%s: %w", "nil or zero object", syscall.EINVAL)
	if w.Error() != f.Error() {
		t.Errorf("Error() = %q, want %q", w.Error(), f.Error())
	}
	if !errors.Is(w, syscall.EINVAL) || Errno(w) != syscall.EINVAL {
		t.Errorf("errors.Is(%v, EINVAL) = false or Errno = %v", w, Errno(w))
	}
	if a, b := New("alloc pd", "rxe0", w).Error(), New("alloc pd", "rxe0", f).Error(); a != b {
		t.Errorf("New(Wrap) = %q, New(fmt.Errorf) = %q", a, b)
	}
	var nilw *Wrapped
	if nilw.Error() != "<nil>" || nilw.Unwrap() != nil {
		t.Error("a nil *Wrapped panics or unwraps to an error")
	}
}
