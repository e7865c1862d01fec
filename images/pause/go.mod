module chaoskit.dev/images/pause

go 1.24.0
