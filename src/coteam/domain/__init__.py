"""The world model every layer shares: the home, its objects and rooms, the action grammar, what a robot observes,
physics, navigation, priors, robot bodies and handling limits."""
