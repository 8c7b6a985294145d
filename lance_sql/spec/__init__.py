"""The partition spec model every layer shares, below ``tables``.

- :mod:`.predicates`: the predicate IR filters travel in between layers;
- :mod:`.partition_field`: a partition field and its transform, as the spec's JSON;
- :mod:`.transforms`: one class per transform, owning its algebra;
- :mod:`.time_ranges`: calendar arithmetic of the time transforms;
- :mod:`.literals`: exact coercion of a literal to the type it is compared with;
- :mod:`.arrow_json`: Arrow types and fields as the spec's JSON.

This layer imports only ``errors``, ``format`` and :mod:`udfs`.
"""
