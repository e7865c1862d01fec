"""The measurements playbooks and `chaoskit measure` take: HPA-to-Ready stages and kube-proxy rule-sync delay."""
