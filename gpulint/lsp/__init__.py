"""The language server (``gpulint server``): gpulint's findings and fixes in the editor. It needs
the ``lsp`` extra (pygls); the rest of gpulint does not."""
