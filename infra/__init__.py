"""Deployment support: the service catalogue shared by docker-compose.yml and the local
launcher (``python -m infra.launcher``), plus the Dockerfile.

Not part of the installed package (setuptools packages only ``cluster_sched*`` and
``workers*``); it runs from a checkout, which is where a deployment is started from.
"""
