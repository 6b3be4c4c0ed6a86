"""The Markdown backend (``backend.MarkdownBackend``): memory content in files people read and edit."""
