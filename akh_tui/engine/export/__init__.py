"""What is handed out of a stored run: reports and OpenTelemetry spans."""
