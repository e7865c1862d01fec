"""The parts of a playbook run that `chaoskit.runner` puts in sequence, all reading the run planned once (`plan`):
the resolved steps as the engine runs them, the steady-state checks, the measurements, the probes, the stage
(chaoskit's workload or the user's subject), the diagnosis while a fault holds, and the suite's peers; and what the
dry run shows of the plan."""
