"""The measurements playbooks and `chaoskit measure` take: HPA-to-Ready stages and kube-proxy rule-sync delay; and
rule_sync_delay.py, the per-node rule-sync delay kube-proxy.slow-sync's effect check measures."""
