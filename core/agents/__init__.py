"""The agent CLIs a user installs by name (`a2a-wrapper agents install|list`)."""
