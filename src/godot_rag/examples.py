"""Built-in example chunks: the user's reference chunk, the `_process(delta)` of the first 2D game tutorial."""

REFERENCE_CHUNK = (
    "func _process(delta):\n\tvar velocity = Vector2.ZERO\n\tif Input.is_action_pressed(&\"move_right\"):\n"
    "\t\tvelocity.x += 1\n\tif Input.is_action_pressed(&\"move_left\"):\n\t\tvelocity.x -= 1\n\n"
    "\tif velocity.length() > 0:\n\t\tvelocity = velocity.normalized() * speed\n\t\t$AnimatedSprite2D.play()\n"
    "\telse:\n\t\t$AnimatedSprite2D.stop()\n\n\tposition += velocity * delta\n"
    "\tposition = position.clamp(Vector2.ZERO, screen_size)"
)
EXAMPLES = [{"name": "reference: first 2D game _process", "chunkText": REFERENCE_CHUNK}]
