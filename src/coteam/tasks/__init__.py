"""Tasks people give a running team: a request in words read as goal lines of the home's world file, by a grammar
(:mod:`coteam.tasks.words`) or by a chat model held to the home's names (:mod:`coteam.tasks.reading`)."""
