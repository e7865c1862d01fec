module chaoskit.dev/images/workload

go 1.24.0
