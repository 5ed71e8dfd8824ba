package uverbs

import (
	"sync"
	"sync/atomic"
)

// mlx5QPTable finds the QP a CQE names, by its 24-bit user index (CQE
// version 1) or QP number: two levels of 4096 entries, as libmlx5's QP
// and user-index tables. Pollers of every CQ of the context look QPs up
// without a lock (mlx5_find_qp and mlx5_find_uidx read theirs without
// one too); creating and destroying a QP write the table under mu. The
// second levels, once made, stay.
type mlx5QPTable struct {
	mu  sync.Mutex
	dir [mlx5QPTableSize]atomic.Pointer[[mlx5QPTableSize]atomic.Pointer[mlx5QP]]
}

const (
	mlx5QPTableShift = 12
	mlx5QPTableSize  = 1 << mlx5QPTableShift
	mlx5QPKeyMask    = 1<<(2*mlx5QPTableShift) - 1
)

// get returns the QP under key, nil if none.
func (t *mlx5QPTable) get(key uint32) *mlx5QP {
	key &= mlx5QPKeyMask
	l := t.dir[key>>mlx5QPTableShift].Load()
	if l == nil {
		return nil
	}
	return l[key&(mlx5QPTableSize-1)].Load()
}

// set puts x under key (nil removes what is there).
func (t *mlx5QPTable) set(key uint32, x *mlx5QP) {
	key &= mlx5QPKeyMask
	t.mu.Lock()
	defer t.mu.Unlock()
	d := &t.dir[key>>mlx5QPTableShift]
	l := d.Load()
	if l == nil {
		if x == nil {
			return
		}
		l = new([mlx5QPTableSize]atomic.Pointer[mlx5QP])
		d.Store(l)
	}
	l[key&(mlx5QPTableSize-1)].Store(x)
}
