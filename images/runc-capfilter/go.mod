module chaoskit.dev/images/runc-capfilter

go 1.24.0
