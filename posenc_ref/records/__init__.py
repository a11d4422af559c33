"""Registry records, one module per scheme family; :mod:`posenc_ref.registry` lists them."""
