"""chaoskit's kopf operator: a ChaosExperiment custom resource runs a playbook with the same engine as
`chaoskit run`, and reports its progress and verdict in the resource's status and events.

experiment.py is the pure part (resource → playbook, record → status); handlers.py the kopf side; __main__.py the
command that starts it beside the kind cluster. A ChaosSchedule makes ChaosExperiments on a cron schedule: cron.py and
schedule.py decide (pure), scheduler.py is its kopf timer.
"""
