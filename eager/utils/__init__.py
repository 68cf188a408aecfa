"""Utilities around the eager engine, as `torch.utils` holds them (`eager.utils.tensorboard`)."""
