"""A Kubernetes API over the cluster-object store, for kubectl and client libraries.

The API is a view of the same Redis store the scheduler uses: objects are read from and
written to the store's hashes, resourceVersions are the store's revision counter, and
watches follow its event stream. Nothing is copied; a write through the API reaches the
scheduler through its watch like any other write.
"""

from cluster_sched.kubeapi.server import ApiServer, ApiServerOptions

__all__ = ["ApiServer", "ApiServerOptions"]
