"""The τ sweep page's parts: across drafts, the drafts' benchmark, its extras, what is drawn of a sweep."""
