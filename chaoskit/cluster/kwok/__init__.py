"""Simulated nodes with kwok: Node objects no machine stands behind, kept Ready by one controller on the control plane.

stages.py says what kwok does to them and their pods, controller.py is that controller's manifests, nodes.py the
Node objects, daemonsets.py keeps DaemonSets' pods off them, converge.py makes the cluster hold exactly N of them
through the API, and simulate.py builds and loads kwok's image first. Which Nodes are simulated is said in one place
below both the cluster build and the components: chaoskit.model.kwok.
"""
