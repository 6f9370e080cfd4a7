"""The reasoning methods of the papers, one package each (decision procedure + prompts). They register through
the ``coteam.methods`` entry-point group; nothing here imports them."""
