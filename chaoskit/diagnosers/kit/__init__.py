"""What the diagnosers are built from: the evidence sources and their time budget, what a finding and a report are,
and the judging several diagnosers share (a static pod's process, leases, quotas, stuck controllers, and which
findings own which symptoms)."""
