"""Upstream's plugin table, ``TestPlugin`` in pkg/scheduler/framework/plugins/
dynamicresources/dynamicresources_test.go (v1.35), ported case by case as fixtures:
this module drives PreEnqueue, PreFilter, Filter, Score/NormalizeScore and PostFilter's
verdict through ``explain`` (``..._table_scores``: the prioritized-list Score cases and
the modelled gates switched off); ``..._table_bind`` drives Reserve, PreBind, Unreserve
and PostFilter's deallocation through the real scheduler and store.

Upstream's ``verify`` compares only the messages of non-success statuses (``AsError``),
so the codes here are those upstream's code returns: ``statusUnschedulable`` is
UnschedulableAndUnresolvable, ``statusError`` an Error that aborts the attempt (the
Filter loop returns at once). Want fields the test loop never reaches (a PostFilter
want where a node fits, "prescore" where the plugin has no PreScore) are not asserted.

Counts: 62 cases; 34 need only default gates, 33 of them ported and passing (all but
canceled); 3 more switch off a gate cluster-sched models and are ported too. The 62
cases, with the gates each needs (v1.35 defaults: DRAPrioritizedList,
DRAAdminAccess, DRAResourceClaimDeviceStatus, DRASchedulerFilterTimeout on; the
DynamicResourceAllocation gate is locked on):

==========================================================  =====================================
empty, claim-reference, claim-template, missing-claim,       default gates: ported (here or in
deleted-claim, wrong-claim, no-resources, with-resources,    ``_table_scores``, and in
with-resources-has-finalizer, with-resources-finalizer-      ``_table_bind`` for the 20 that
gets-removed, with-resources-finalizer-gets-added,           reach Reserve or change claims)
skip-bind, exhausted-resources, tainted-device-disabled,
request-admin-access-with-DRAAdminAccess-featuregate,
structured-ignore-allocated-admin-access,
claim-parameters-CEL-runtime-error, class-parameters-CEL-
runtime-error, CEL-runtime-error-for-one-of-two-nodes,
CEL-runtime-error-for-one-of-three-nodes, missing-class,
wrong-topology, good-topology, bind-failure, reserved-okay,
claim-with-request-with-unknown-device-class,
claim-with-prioritized-list-unknown-device-class,
claim-with-prioritized-list, timeout, timeout_zero,
single-claim-prioritized-list-scoring, multiple-claims-
prioritized-list-scoring, multiple-requests-prioritized-
list-scoring (33)
canceled (1)                                                 default gates: NOT ported: Filter run
                                                             with a context its caller cancelled
                                                             (Go context.Cause); nothing here can
                                                             cancel a running Filter
request-admin-access-without-DRAAdminAccess-featuregate      gate off (DRAAdminAccess=false),
claim-with-prioritized-list-feature-disabled                 (DRAPrioritizedList=false),
timeout_disabled (3)                                         (DRASchedulerFilterTimeout=false):
                                                             modelled, ported with --feature-gates
DRA-disabled (1)                                             DynamicResourceAllocation off: locked
                                                             on in v1.35, not ported
tainted-device-enabled (1)                                   DRADeviceTaints: not ported
empty-with-extended-resources-enabled, extended-resource-    DRAExtendedResource: not ported
name-with-node-resource, extended-resource-one-device-
plugin-one-dra, extended-resource-name-with-zero-
allocatable, non-DRA-extended-resource-name-with-zero-
allocatable, extended-resource-name-no-resource,
extended-resource-name-with-resources, implicit-extended-
resource-name-with-resources, implicit-extended-resource-
name-two-containers-with-resources, extended-resource-name-
with-resources-fail-patch, extended-resource-name-with-
resources-has-claim, extended-resource-name-with-resources-
delete-claim, extended-resource-name-bind-failure, extended-
resource-name-skip-bind, extended-resource-name-claim-
creation-failure (15)
bound-claim-with-succeeded-binding-conditions, bound-claim-  DRADeviceBindingConditions:
with-failed-binding, bound-claim-with-timed-out-binding,     not ported
prebind-fail-with-binding-timeout, bound-claim-with-mixed-
binding-conditions, bound-claim-without-binding-conditions,
multi-claims-binding-conditions-all-success, multi-claims-
binding-conditions-one-fail (8)
==========================================================  =====================================
"""

from __future__ import annotations

import pytest

from tests.plugins.dra_table_cases import (
    CASES,
    check,
)


@pytest.mark.parametrize("name", list(CASES))
def test_upstream_plugin_case(name: str) -> None:
    check(name, CASES[name])
