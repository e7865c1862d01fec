"""chaoskit's node agent: what runs on every node of an installed cluster and executes chaoskit's node commands."""
