"""From cameras and detections to what a robot observes: perception and vision."""
