"""`make crew-demo` (`python -m examples.crew.demo`): the demo's phases, its mock model servers,
and the manifests and daemon configs beside them."""
