"""One robot's side of a method: its memory, goals and options, the messages it sends and guards, its skills and the
turn that runs them."""
