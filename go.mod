module github.com/purerdma/rdma

go 1.24

require (
	github.com/google/go-cmp v0.7.0
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.35.0
)
