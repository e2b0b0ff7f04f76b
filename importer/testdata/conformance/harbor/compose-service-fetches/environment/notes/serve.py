# /// script
# dependencies = ["bottle"]
# ///
import bottle
