"""What a person sees of a job: typed step events, the live view and its questions, and the
Markdown report."""
