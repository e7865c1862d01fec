"""The fault catalog, one module per component (apiserver, scheduler, controller_manager, kubelet, kube_proxy)."""
