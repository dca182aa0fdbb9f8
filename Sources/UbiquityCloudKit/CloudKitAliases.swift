// SPDX-License-Identifier: Apache-2.0

/// CloudKit's names for the CloudKit client types, so code written for Apple's framework
/// reads the same.

/// `CKContainer`.
public typealias CKContainer = CloudContainer
/// `CKDatabase`.
public typealias CKDatabase = CloudDatabase
/// `CKDatabaseOperation`.
public typealias CKDatabaseOperation = CloudDatabaseOperation
/// `CKRecord`.
public typealias CKRecord = Record
/// `CKRecordValueProtocol`.
public typealias CKRecordValueProtocol = RecordValueProtocol
/// `CKRecordZone`.
public typealias CKRecordZone = RecordZone
/// `CKAsset` (the server's asset description; uploading is not supported yet).
public typealias CKAsset = Asset
/// `CKQuery`.
public typealias CKQuery = Query
/// `CKQueryOperation`.
public typealias CKQueryOperation = QueryOperation
/// `CKModifyRecordsOperation`.
public typealias CKModifyRecordsOperation = ModifyRecordsOperation
/// `CKFetchRecordsOperation`.
public typealias CKFetchRecordsOperation = FetchRecordsOperation
/// `CKFetchRecordZoneChangesOperation`.
public typealias CKFetchRecordZoneChangesOperation = FetchRecordZoneChangesOperation
/// `CKFetchDatabaseChangesOperation`.
public typealias CKFetchDatabaseChangesOperation = FetchDatabaseChangesOperation
/// `CKModifyRecordZonesOperation`.
public typealias CKModifyRecordZonesOperation = ModifyRecordZonesOperation
/// `CKFetchRecordZonesOperation`.
public typealias CKFetchRecordZonesOperation = FetchRecordZonesOperation
/// `CKServerChangeToken`.
public typealias CKServerChangeToken = ServerChangeToken
/// `CKError`.
public typealias CKError = CloudKitError
/// `CKCurrentUserDefaultName`: the owner name that stands for the signed-in user.
public let CKCurrentUserDefaultName = RecordZone.ID.currentUserOwnerName
/// `CKUserIdentity`.
public typealias CKUserIdentity = UserIdentity
