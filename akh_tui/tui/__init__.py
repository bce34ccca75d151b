"""The Textual workbench: screens and widgets that render engine records and send user intent back."""
