"""Cases and buggy twins of the advanced exercises, one module per exercise.

Each module (``masked_attention``, ``kv_cache``, ``grouped_query_attention``,
``memory_efficient_attention``, ``attention_backward``) holds the case builder
and the twins of its exercise side by side, so the catalog cannot drift from
the code; ``twinning`` holds what they share.
"""
