"""create, update, patch, delete, deletecollection and binding, as the API server does them.

Every body is decoded and checked (``request``) before the store is touched, so a bad
body is one Status and nothing stored. Creates fill generateName, generation 1, and let
the store stamp uid, creationTimestamp and resourceVersion. Updates and patches run
inside the store's compare-and-set loop: a stale ``metadata.resourceVersion`` is 409
Conflict, the main resource keeps the stored status and the status subresource keeps
everything but status. ``pods/binding`` (and the legacy ``bindings``) binds through the
store's binding script: 201 with a Success Status, 409 when the pod is bound or going.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from cluster_sched.api.selectors import validate_dns_subdomain
from cluster_sched.errors import InvalidObjectError
from cluster_sched.kubeapi import events as kevents
from cluster_sched.kubeapi.errors import (
    ApiError,
    bad_request,
    conflict,
    invalid,
    method_not_allowed,
    not_found,
    status_object,
)
from cluster_sched.kubeapi.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from cluster_sched.kubeapi.reads import Scope, selector_for
from cluster_sched.kubeapi.request import (
    Request,
    Response,
    check_object,
    decode_body,
    strip_unknown,
)
from cluster_sched.kubeapi.resources import Resource, lookup
from cluster_sched.kubeapi.storage import ObjectView, object_key
from cluster_sched.store.results import BindOutcome

__all__ = ["GENERATE_NAME_ATTEMPTS", "Writes", "random_suffix"]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
#: Names tried for one generateName create (upstream RetryGenerateName: 8 in all).
GENERATE_NAME_ATTEMPTS = 8
_STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def _not_stored(r: Resource) -> ApiError:
    return method_not_allowed(
        f"{r.plural}.{r.group or 'core'} is served read-only (always empty): "
        f"the cluster-sched store does not hold {r.kind} objects"
    )


def random_suffix() -> str:
    """generateName's suffix as the API server draws it: 5 characters, no vowels."""
    return "".join(secrets.choice(_NAME_CHARS) for _ in range(5))


class Writes:
    def __init__(self, view: ObjectView) -> None:
        self.view = view
        #: draws generateName suffixes (a seam: tests make collisions certain)
        self.name_suffix: Callable[[], str] = random_suffix

    # --- create -------------------------------------------------------------------

    def create(self, scope: Scope, request: Request) -> Response:
        r = scope.resource
        body = decode_body(request)
        if r.view == "events":
            return self._create_event(scope, body)
        if r.kind == "Binding":
            return self.bind(scope, request, body)
        if not r.stored:
            raise _not_stored(r)
        doc = check_object(r, body)
        warnings = strip_unknown(doc, request.query.get("fieldValidation", ""))
        meta = doc["metadata"]
        name = meta.get("name") or ""
        prefix = "" if name else (meta.get("generateName") or "")
        if not name:
            if not prefix:
                raise invalid(r.kind, "", "name or generateName is required", "metadata.name")
            name = meta["name"] = prefix + self.name_suffix()
        self._check_name(r, name)
        if r.namespaced:
            ns = meta.get("namespace") or scope.namespace or "default"
            if scope.namespace and ns != scope.namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        for server_field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
            meta.pop(server_field, None)
        meta["generation"] = 1
        self.view.validate(r, doc, name)
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            try:
                obj = self.view.create(r, doc, name)
            except ApiError as err:
                # upstream RetryGenerateName: a generated name that is taken is drawn
                # again (the create is atomic, so a draw is never lost to a race)
                if (
                    not prefix
                    or err.reason != "AlreadyExists"
                    or attempt + 1 == GENERATE_NAME_ATTEMPTS
                ):
                    raise
                name = meta["name"] = prefix + self.name_suffix()
                continue
            return Response(201, obj, warnings=warnings)
        raise AssertionError("unreachable")

    def _check_name(self, r: Resource, name: str) -> None:
        try:
            validate_dns_subdomain(name, "metadata.name")
        except InvalidObjectError as err:
            raise invalid(r.kind, name, err.reason, "metadata.name") from None

    def _create_event(self, scope: Scope, body: Any) -> Response:
        if not isinstance(body, dict):
            raise bad_request("the object must be a JSON object")
        row = kevents.record(
            self.view.store, body, scope.resource.group, scope.namespace or "default"
        )
        core = kevents.core_event(row, "", str(self.view.resource_version()))
        return Response(201, kevents.event_v1(core) if scope.resource.group else core)

    # --- update and patch ---------------------------------------------------------

    def update(self, scope: Scope, request: Request) -> Response:
        r = self._writable(scope)
        doc = check_object(r, decode_body(request))
        warnings = strip_unknown(doc, request.query.get("fieldValidation", ""))
        body_name = doc["metadata"].get("name")
        if body_name and body_name != scope.name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({scope.name})"
            )
        doc["metadata"]["name"] = scope.name
        if r.namespaced:
            doc["metadata"]["namespace"] = scope.namespace
        self.view.validate(r, doc, scope.name)
        obj = self._write(scope, lambda old: doc)
        return Response(200, obj, warnings=warnings)

    def patch(self, scope: Scope, request: Request) -> Response:
        r = self._writable(scope)
        kind = request.content_type
        if kind == "application/apply-patch+yaml":
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "server-side apply is not supported by cluster-sched; use client-side "
                "kubectl apply (without --server-side) or a strategic merge patch",
            )
        if kind not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}, application/apply-patch+yaml",
            )
        patch = decode_body(request)
        if kind != JSON_PATCH and not isinstance(patch, dict):
            raise bad_request("the patch must be a JSON object")
        validation = request.query.get("fieldValidation", "")
        warnings: list[str] = []

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            base = copy.deepcopy(old)
            if kind == JSON_PATCH:
                new = apply_json_patch(base, patch)
            elif kind == MERGE_PATCH:
                new = apply_merge_patch(base, patch)
            else:
                new = apply_strategic_merge_patch(base, patch, r.group, r.version, r.kind)
            new = check_object(r, new, "patched object")
            if new["metadata"].get("name") != scope.name:
                raise bad_request("the patch may not change metadata.name")
            if r.namespaced and new["metadata"].get("namespace") != scope.namespace:
                raise bad_request("the patch may not change metadata.namespace")
            warnings[:] = strip_unknown(new, validation)
            self.view.validate(r, new, scope.name)
            return new

        obj = self._write(scope, mutate)
        return Response(200, obj, warnings=warnings)

    def _writable(self, scope: Scope) -> Resource:
        r = scope.resource
        if r.view == "events" or r.kind == "Binding":
            raise method_not_allowed(f"{r.plural} cannot be updated through this API")
        if not r.stored:
            raise _not_stored(r)
        if not scope.name:
            raise method_not_allowed("update and patch need an object name")
        if scope.subresource not in ("", "status"):
            raise not_found(r.group, f"{r.plural}/{scope.subresource}", scope.name)
        return r

    def _write(self, scope: Scope, make: Any) -> dict[str, Any]:
        r = scope.resource
        key = object_key(r, scope.namespace, scope.name)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            new = make(old)
            meta, old_meta = new["metadata"], old.get("metadata") or {}
            wanted_rv = meta.get("resourceVersion")
            if wanted_rv and wanted_rv != old_meta.get("resourceVersion"):
                raise conflict(r.group, r.plural, scope.name, _STALE)
            wanted_uid = meta.get("uid")
            if wanted_uid and wanted_uid != old_meta.get("uid"):
                raise conflict(
                    r.group,
                    r.plural,
                    scope.name,
                    f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: {old_meta.get('uid')}",
                )
            for server_field in ("uid", "creationTimestamp"):
                if server_field in old_meta:
                    meta[server_field] = old_meta[server_field]
            if scope.subresource == "status":
                out = dict(old)
                if "status" in new:
                    out["status"] = new["status"]
                else:
                    out.pop("status", None)
                return out
            if "status" in r.subresources:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if r.kind == "Pod":
                old_node = (old.get("spec") or {}).get("nodeName")
                new_spec = new.get("spec")
                if (
                    isinstance(new_spec, Mapping)
                    and new_spec.get("nodeName") != old_node
                    and not old_node
                ):
                    raise invalid(
                        "Pod",
                        scope.name,
                        "pod updates may not set spec.nodeName; bind through pods/binding",
                        "spec.nodeName",
                    )
            stored_generation = old_meta.get("generation")
            generation = stored_generation if isinstance(stored_generation, int) else 1
            meta["generation"] = (
                generation + 1 if new.get("spec") != old.get("spec") else generation
            )
            return new

        return self.view.update(r, key, scope.name, mutate)

    # --- delete -------------------------------------------------------------------

    def delete(self, scope: Scope, request: Request) -> Response:
        r = scope.resource
        if r.view == "events" or not r.stored:
            raise not_found(r.group, r.plural, scope.name)
        key = object_key(r, scope.namespace, scope.name)
        options = decode_body(request) if request.body else {}
        pre = options.get("preconditions") if isinstance(options, dict) else None
        if options is not None and not isinstance(options, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        obj = self.view.get(r, key, scope.name)
        if isinstance(pre, dict):
            meta = obj.get("metadata") or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise conflict(
                    r.group,
                    r.plural,
                    scope.name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise conflict(r.group, r.plural, scope.name, _STALE)
        if not self.view.store.delete(r.kind, key):
            raise not_found(r.group, r.plural, scope.name)
        return Response(200, obj)

    def delete_collection(self, scope: Scope, request: Request) -> Response:
        r = scope.resource
        if r.view == "events" or not r.stored:
            raise _not_stored(r)
        selector = selector_for(r, request.query)
        objs, rv = self.view.snapshot(r.kind)
        doomed = [
            (k, o)
            for k, o in objs
            if (
                not scope.namespace or (o.get("metadata") or {}).get("namespace") == scope.namespace
            )
            and selector.matches(o)
        ]
        gone = self.view.store.delete_many([(r.kind, k) for k, _ in doomed])
        items = [o for (_, o), ok in zip(doomed, gone, strict=True) if ok]
        return Response(
            200,
            {
                "kind": f"{r.kind}List",
                "apiVersion": r.api_version,
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    # --- binding --------------------------------------------------------------------

    def bind(self, scope: Scope, request: Request, body: Any = None) -> Response:
        """``pods/<name>/binding`` or ``namespaces/<ns>/bindings``: bind a pod to a node."""
        if body is None:
            body = decode_body(request)
        if not isinstance(body, dict):
            raise bad_request("the binding must be a JSON object")
        if body.get("kind") not in (None, "", "Binding"):
            raise bad_request(
                f"the kind in the data ({body.get('kind')}) does not match the expected kind (Binding)"
            )
        raw_meta = body.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        name = meta.get("name") or scope.name
        if not isinstance(name, str) or not name:
            raise invalid("Binding", "", "Required value", "metadata.name")
        if scope.name and name != scope.name:
            raise bad_request(
                f"name in URL does not match name in Binding object ({name} != {scope.name})"
            )
        target = body.get("target")
        node = target.get("name") if isinstance(target, dict) else None
        if not isinstance(node, str) or not node:
            raise invalid("Binding", name, "Required value", "target.name")
        if isinstance(target, dict) and target.get("kind") not in (None, "", "Node"):
            raise invalid(
                "Binding", name, f"must be Node, not {target.get('kind')!r}", "target.kind"
            )
        store = self.view.store
        if store.get("Node", node) is None:
            raise not_found("", "nodes", node)
        namespace = scope.namespace or meta.get("namespace") or "default"
        key = f"{namespace}/{name}"
        uid = meta.get("uid") if isinstance(meta.get("uid"), str) and meta.get("uid") else None
        result = store.bind(key, node, uid)
        if result.outcome is BindOutcome.NOT_FOUND:
            raise not_found("", "pods", name)
        if result.outcome is not BindOutcome.BOUND:
            raise conflict("", "pods/binding", name, result.message)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and annotations:
            pods = lookup("", "v1", "pods")
            assert pods is not None

            def annotate(old: dict[str, Any]) -> dict[str, Any]:
                new = copy.deepcopy(old)
                new_meta = new.setdefault("metadata", {})
                new_meta["annotations"] = {
                    **(new_meta.get("annotations") or {}),
                    **{str(k): str(v) for k, v in annotations.items()},
                }
                return new

            self.view.update(pods, key, name, annotate)
        return Response(201, status_object(201, "", ""))
