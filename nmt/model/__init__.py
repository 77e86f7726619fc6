"""The models: attention behind one interface, encoders, the RNNsearch and Transformer decoders,
their initialisation, and the loss fused with the vocabulary projection."""
