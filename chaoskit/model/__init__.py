"""Pure data: the playbook format, its durations, records and timelines. No I/O here.

Import from the modules themselves (chaoskit.model.playbook, chaoskit.model.duration, ...): this package re-exports
nothing, so a look at a duration does not load every playbook model.
"""
