"""What a team living in a real home needs: world files and their drawing, the safety policy, signed messages, the
roster of teammates, and passages where robots meet."""
