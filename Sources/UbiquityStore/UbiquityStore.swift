/// The local SQLite stores (GRDB): the metadata index (``MetadataIndex``); later the sync journal
/// and the local key-value store. The daemon is their one writer.
package enum UbiquityStore {}
