"""Built-in teams: the baselines every reasoning method is compared against (random, rhp, mhp, oracle).
They register through the ``coteam.methods`` entry-point group; nothing here imports them."""
