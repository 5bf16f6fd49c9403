"""`examples.crew`: several A2A agents chained into one reliable multi-agent job."""
