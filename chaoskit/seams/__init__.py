"""The few places chaoskit does I/O, each with its fake.

shell.py runs host commands (FakeRunner); nodeexec.py runs a command in a node, by `docker exec` or through
agentexec.py's node agents (FakeNodeExec), on the nodes nodecontainers.py lists; kube.py is the API server
(FakeKube); scrape.py fetches /metrics (FakeScraper). Beside them what they need at run time: poll.py (the one
polling loop), certs.py (kubeadm's certificates on the nodes), pki.py (the agents' mutual TLS).
"""
