"""Host ports a pod claims on its node, as the NodeTable counts them.

The table keeps one ``port_count`` row per distinct ``PortKey`` (upstream's HostPortInfo,
flattened); NodePorts compares a pod's keys against the rows of a node.
"""

from __future__ import annotations

from cluster_sched.api.objects import Pod

#: (hostIP, protocol, hostPort); hostIP "" means 0.0.0.0
PortKey = tuple[str, str, int]


def pod_host_ports(pod: Pod) -> list[PortKey]:
    """The (hostIP, protocol, hostPort) triples a pod claims; hostIP "" means 0.0.0.0.

    Upstream GetHostPorts: sidecars (init containers with ``restartPolicy: Always``) run
    for the pod's whole life, so their host ports count too; other init containers don't.
    """
    out: list[PortKey] = []
    sidecars = [c for c in pod.init_containers if c.restart_policy == "Always"]
    for c in (*sidecars, *pod.containers):
        for p in c.ports:
            if p.host_port > 0:
                ip = "" if p.host_ip in ("", "0.0.0.0") else p.host_ip
                out.append((ip, p.protocol or "TCP", p.host_port))
    return out


def may_claim_host_ports(pod: Pod) -> bool:
    """Conservative and cheap: some container of the pod lists ports. Bulk accounting
    sends such pods through the per-pod path, which counts their host ports."""
    for c in pod.containers:
        if c.ports:
            return True
    return bool(pod.init_containers) and any(c.ports for c in pod.init_containers)
