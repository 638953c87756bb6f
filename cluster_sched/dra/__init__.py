"""Dynamic Resource Allocation (resource.k8s.io/v1): the objects, CEL device selectors,
resource pools, the structured allocator, the prioritized-list score and the DRA listers
the DynamicResources plugin reads."""
