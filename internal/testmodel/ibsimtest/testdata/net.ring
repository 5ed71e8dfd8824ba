# The ring fabric: six 12-port switches Ring1..Ring6 cabled in a ring
# (RingN[2] to RingN+1[1]), a chord Ring1[3]-Ring4[3], one HCA on each
# switch's port 5 (hN), and a dual-homed two-port HCA "Dual" on
# Ring2[6] and Ring5[6]. Two routes of equal length join most pairs.

Switch	12 "Ring1"
[1]	"Ring6"[2]
[2]	"Ring2"[1]
[3]	"Ring4"[3]
[5]	"h1"[1]

Switch	12 "Ring2"
[1]	"Ring1"[2]
[2]	"Ring3"[1]
[5]	"h2"[1]
[6]	"Dual"[1]

Switch	12 "Ring3"
[1]	"Ring2"[2]
[2]	"Ring4"[1]
[5]	"h3"[1]

Switch	12 "Ring4"
[1]	"Ring3"[2]
[2]	"Ring5"[1]
[3]	"Ring1"[3]
[5]	"h4"[1]

Switch	12 "Ring5"
[1]	"Ring4"[2]
[2]	"Ring6"[1]
[5]	"h5"[1]
[6]	"Dual"[2]

Switch	12 "Ring6"
[1]	"Ring5"[2]
[2]	"Ring1"[1]
[5]	"h6"[1]

Hca	2 "h1"
[1]	"Ring1"[5]

Hca	2 "h2"
[1]	"Ring2"[5]

Hca	2 "h3"
[1]	"Ring3"[5]

Hca	2 "h4"
[1]	"Ring4"[5]

Hca	2 "h5"
[1]	"Ring5"[5]

Hca	2 "h6"
[1]	"Ring6"[5]

Hca	2 "Dual"
[1]	"Ring2"[6]
[2]	"Ring5"[6]
