"""The image network: epochs, layers, Fashion-MNIST and VGG-16."""
