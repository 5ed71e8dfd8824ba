package counters_test

import (
	"testing"

	"github.com/purerdma/rdma/counters"
)

func TestDescribeSmoke(t *testing.T) {
	sets, err := counters.DescribeWith("mlx5_0", &counters.Options{SysfsRoot: "../sysfs/testdata/mlx5-eth"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		v := make([]uint64, len(s.Names))
		err := s.Read(v)
		t.Logf("%d %v %v %v cached=%v %v %v err=%v", s.ID, s.Port, s.Counted, s.Source, s.Cached, s.Names[:min(3, len(s.Names))], v[:min(3, len(v))], err)
		s.Close()
	}
}
