"""NodeResourcesFit and NodeResourcesBalancedAllocation, as upstream's noderesources package."""
